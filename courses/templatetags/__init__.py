"""The ``courses`` app's template tag libraries (Django looks for them here): ``lab``."""
