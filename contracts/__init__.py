"""The contract between the runtime scoring path, model operations and the Triton models:
feature vector layout, model names, tensor names and shapes. Pure Python, imports no app, so
the Triton python-backend models and the trainers can read it without Django."""
