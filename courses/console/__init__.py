"""The kubectl console in the browser, to come: nothing lives here yet.

It will hold the console's page and its websocket: a student types ``kubectl`` commands that run
against their cluster's API server as ``student:<username>``, reached through ``courses.gateway``, and
sees the requests they make animate on the topology beside it.
"""
