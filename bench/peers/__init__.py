"""pericurate beside its peers on one folder of films, and the spread of the corpus's
planted look-alike visits reported beside them."""
