#!/usr/bin/env bash
# Record and replay a suite of third-party pthread programs: see scripts/third_party.py.
exec python3 "$(dirname "$0")/third_party.py" "$@"
