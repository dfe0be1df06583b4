"""What every bench room shares: the measured child process (``measure``), the synthetic
corpus (``corpus``), the real films read in place (``real_films``), the ``pericurate``
command lines and draft build (``splits_bench``) and the table's met/missed cell."""
