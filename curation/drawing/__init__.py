"""How a sample film is drawn: its anatomy, its rendering at an exposure, the reframings of a
copy, realistic revisits of one patient and the JPEG encoders' signatures."""
