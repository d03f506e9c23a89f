"""The moderators' web dashboard: queue, post evidence, decisions, bulk actions, enforcement,
appeals, audit log and metrics pages. Models and the rules they follow live in moderation."""
