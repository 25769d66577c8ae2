"""Where evidence comes from, chosen once: the store, the live node, saved artifacts, or a
merge of store and live. Every view reads an `Investigation` built from one `Evidence`."""
