"""Model- and dataset-card templates (Jinja, rendered by sciembed.hub.cards and datasets_scripts/hub_layout.py)."""
