"""Helpers both the tests and the bench import: film-sized pictures drawn without the code
under test (``film_kit``) and the same-picture cases made from them (``same_picture_cases``).

The toolkit never imports this package, and this package never imports ``tests`` or ``bench``
(the layering contracts in ``pyproject.toml`` check both).
"""
