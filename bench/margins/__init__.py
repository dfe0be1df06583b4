"""Margins of the toolkit's limits against distributions whose truth is known: the
same-picture limits, the pixel check's decode scale and the content check."""
