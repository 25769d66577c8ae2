"""Renderers: an Investigation (or plain data from it) in; text, the versioned JSON contract
or HTML pages out. No logic of their own beyond layout, rounding and time formats. The HTML
ones are imported only by the commands that draw pages, never by `record`."""
