"""Accounts: sign up, sign in, sign out (Django auth, rate-limited), and each person's saved
preferences: the interface's language, which follows them from one browser to another.

- ``ratelimit``: failed sign-ins counted per username and per address (a pure rule, a cache adapter);
- ``backends``: Django's ``ModelBackend`` with that limit, wherever a password is checked;
- ``forms``, ``views``, ``urls``: the pages (sign up, sign in, sign out, the language switch);
- ``middleware``: which language a request gets (the browser's choice, the saved one, Accept-Language);
- ``models``, ``services``: the saved ``Preference`` and the functions that read and write it.
"""
