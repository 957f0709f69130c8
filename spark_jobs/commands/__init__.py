"""``cdclake`` sub-commands that run on the Spark Connect server (``land``, ``validate``, ``sql``,
``history``). The ``cdclake`` command (``cdclake.cli``) finds them by module name, so that the
``cdclake`` package never imports this one; each imports pyspark and the jobs only when it runs,
so building the parser of every ``cdclake`` command stays cheap."""
