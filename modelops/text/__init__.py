"""DistilBERT spam/ham text model: base checkpoint conversion, data, training, ONNX export, inference.

Pure Python (no Django imports): management commands wrap these modules and pass settings in.
"""
