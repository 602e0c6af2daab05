"""``mempal ui``: a local web viewer of the palace, a client of the daemon's socket like the CLI.

Pages (server-rendered HTML, one stylesheet, no script, nothing fetched from the network): the overview
(``pages/overview``), search (``pages/search``), a drawer in its session and a session in order
(``pages/drawer``), a wing's timeline (``pages/timeline``), the knowledge graph (``pages/graph``, drawn by
``svg``), the cowork inbox and pack outputs (``pages/inbox``). ``guard`` checks every request (Host, token
cookie, methods, CSRF, headers); ``html`` escapes everything it is given; ``command`` binds and serves.
"""
