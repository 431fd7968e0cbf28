"""A third engine, written the way a plug-in package would be, to prove that one needs no edit to neutral code.

It is registered only through the entry-point group ``alltalk_gui.engines`` (see :mod:`tests.engine_plugins`), and
differs from the built-in engines wherever an engine may: it works at 16 kHz, trains on clips of at most 8 s, its
loss has its own two parts (``duration`` and ``spectrum``), it has its own training option (``duration_weight``,
with ``voice_description``) and generation option (``brightness``), and it speaks in a voice described in words
(a DESCRIPTION reference). Its model is a tiny real torch network trained by the app's own loop.
"""
