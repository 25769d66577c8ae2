"""Plain frozen records shared by all layers. No I/O here.

One module per domain (cores, events, cgroups, profiles) so features grow side by side;
import from the submodule."""
