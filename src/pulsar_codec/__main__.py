"""``python -m pulsar_codec`` runs the ``pulsar-codec`` command."""

from .cli import main

if __name__ == "__main__":
    raise SystemExit(main())
