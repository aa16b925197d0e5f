//! The interactive app: state, actions, keymap, and the event loop.
