"""Widgets for live teaching. One module per topic; each class keeps what it last drew
in ``self.last`` (data) and ``self.fig`` (the figure) so tests can drive it headlessly."""
