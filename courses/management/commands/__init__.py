"""``manage.py`` commands of ``courses``; each module's docstring explains its command."""
