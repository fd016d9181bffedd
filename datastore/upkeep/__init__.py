"""The table's own care: provisioning, the layout version, migrations, backfills, counter repair."""
