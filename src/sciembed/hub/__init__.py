"""Hub export: Hub-ready model folders, model cards, push."""
