DATASET = "tirandazdylan/periapical-lesions-pai"
REVISION: str | None = None
