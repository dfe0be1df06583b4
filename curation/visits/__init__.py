"""Visits of one patient: RootSIFT descriptors of the anatomy (``descriptors``), retrieval of
candidate films by a visual vocabulary (``retrieval``), verification that fits a revisit
(``verification``), and both together over a set of films (``find``)."""
