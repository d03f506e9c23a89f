"""Model operations: the base checkpoint, training, export and quantisation, synthetic data,
model cards, calibration, the Triton model repository and its publishing, the tritonserver
supervisor and perf tooling. The runtime scoring path (scoring/) never imports this package;
both share the tensor and feature contract in contracts/."""
