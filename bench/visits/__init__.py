"""Visits of one patient (``curation.visits``) measured on the real films."""
