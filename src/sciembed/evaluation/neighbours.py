"""Removed: the nearest neighbours of a collection's papers live in :mod:`sciembed.search.neighbours`."""

from ..removed import RemovedNameError, removed_message

raise RemovedNameError(
    removed_message("sciembed.evaluation", "neighbours", "sciembed.neighbours (sciembed.search.neighbours)"),
    name=__name__,
)
