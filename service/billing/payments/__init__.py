"""Credit purchases: the provider the operator configured (``provider``), Stripe Checkout
(``stripe_checkout``) or simulated payments (``demo``), both crediting through ``purchases``."""
