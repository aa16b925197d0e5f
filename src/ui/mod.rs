//! Drawing: widgets that read the app state and draw a frame. Nothing here mutates the app.
