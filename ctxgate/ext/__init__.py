"""The extras: each a package beside the spine that reaches it only through the hooks of
``ctxgate/hookspec.py``. ``PLUGINS`` lists their hook modules; each hook answers in this order."""

from ctxgate.ext.checkpoints import plugin as checkpoints
from ctxgate.ext.families import plugin as families
from ctxgate.ext.html import plugin as html
from ctxgate.ext.progress import plugin as progress
from ctxgate.ext.published import plugin as published
from ctxgate.ext.ray import plugin as ray
from ctxgate.ext.rope import plugin as rope
from ctxgate.ext.search import plugin as search
from ctxgate.ext.thinking import plugin as thinking
from ctxgate.ext.trackers import plugin as trackers
from ctxgate.ext.training import plugin as training

PLUGINS: tuple[object, ...] = (checkpoints, families, html, progress, published, ray, rope)
PLUGINS += (search, thinking, trackers, training)
