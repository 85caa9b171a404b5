"""``GET /docs``: the API reference for people (service.reference.page), its field tables
(service.reference.fields) and its examples (service.reference.examples)."""
