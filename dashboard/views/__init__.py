"""Dashboard views: thin wrappers that check the role, parse input, call one service or
selector and render a template from templates/dashboard/."""
