"""Amaranth 0.5 gateware of xpfilt: the XML front end, the filtering engines and their glue."""
