"""``manage.py runlab`` (and, with the components issue, ``runcomponent``)."""
