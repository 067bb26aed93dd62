"""The ``mochi`` command line. One module per subcommand, each with ``register`` and ``run``."""
