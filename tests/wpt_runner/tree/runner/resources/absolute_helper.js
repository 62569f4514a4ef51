self.absoluteHelper = 'absolute';
