"""Feature models (XGBoost): link, behaviour and the fusion tree over the sub-model outputs.

- ``synthetic``: documented synthetic social context joined to the real SMS texts (bootstrap data)
- ``train``: ``train_link_model`` / ``train_behaviour_model`` / ``train_fusion_model``,
  ``cross_fit_predict``, ``evaluate``, ``explain`` (pred_contribs), ``load_model``
- ``explain``: contributions that add up to the margin (pure numpy + xgboost)
- ``text_probs``: the text model's held-out probabilities for the fusion tree (or a TF-IDF fallback)
- ``uncertain_text``: fusion training rows for text scores the SMS validation split lacks
- ``response``: the final score against the text score in a neutral context
- ``bootstrap``: the leakage-controlled bootstrap run; ``card``: MODEL_CARD.md
- ``artifacts``: the on-disk layout Triton's publish step reads (``ARTIFACTS_DIR/tabular/current``)
"""
