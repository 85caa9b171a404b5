"""The native API front: its routes by what they are about, and the OpenAPI document."""
