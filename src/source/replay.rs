//! Recordings: the JSON Lines format, the recorder and the replay source.
