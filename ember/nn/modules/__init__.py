"""ember.nn's layer and loss classes, one file per family (torch.nn.modules' layout); ember.nn
re-exports them, so use ``ember.nn.CrossEntropyLoss`` rather than these module paths."""
