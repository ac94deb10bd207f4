"""The commands as a user runs them: options, exit statuses, signals, the inputs they read."""
