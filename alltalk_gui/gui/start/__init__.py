"""The start of the app: welcome, first-run checks, new project and About."""
