"""Progress: which steps a student passed, when, and the help they asked for."""
