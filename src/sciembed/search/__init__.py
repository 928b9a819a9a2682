"""Searching a collection with its embeddings: the nearest neighbours of its papers (:func:`.neighbours.neighbours`,
``sciembed neighbours``)."""
