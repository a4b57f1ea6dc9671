"""The gateway: the pages a player sees and the JSON API that mirrors them (FastAPI + Jinja2)."""
