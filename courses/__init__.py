"""The courses: chapters that point into a live cluster, the landing page, and (later) progress."""
