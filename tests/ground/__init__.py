"""Floor 0, ground: messages, errors, the strategy protocol, secret redaction."""
