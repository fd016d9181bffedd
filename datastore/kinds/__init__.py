"""Every kind of item the table holds, declared once, and the typed values read from them."""
