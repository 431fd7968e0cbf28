"""Model engines, one plug-in package each (XTTS v2, F5-TTS); the interface they implement is core/engine_api."""
