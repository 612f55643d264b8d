"""What leaves Recur: events written to an outbox in the transaction of the change that causes them, and
their delivery to webhooks (signed the Standard Webhooks way, retried, guarded against internal
addresses) by whichever Recur process is alive."""
