"""Management commands of the web application (``manage.py checkcontent``)."""
