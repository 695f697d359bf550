"""One module per figure of issue 8; each has ``run(ctx) -> list[Row]``."""
