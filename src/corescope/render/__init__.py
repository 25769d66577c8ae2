"""HTML renderers: pages built from plain data (the flame data, the Investigation's JSON).
Imported only by the commands that draw pages, never by `record`."""
