"""The cases the sample plants for the chain to find: augmented copies (also among the
originals), visits of one patient and bad inputs."""
