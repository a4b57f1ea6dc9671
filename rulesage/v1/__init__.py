"""Generated from protos/rulesage/v1 by scripts/gen_protos.py; do not edit."""
