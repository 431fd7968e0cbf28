"""The engine interface: the Engine protocol and its registry, the languages the app works in, and the download
pieces the engines share. It is the low floor every step of the core and every engine stands on; it imports no
engine and no step package."""
