postMessage('ml: ' + ('ml' in navigator));
